"""The ground floor: number validation, the exact 0/1 objective and the problem records.

Every other package (mechanisms, oracles, pipeline) imports from here; this package imports none
of them.
"""
