"""``python -m pipeline``: see pipeline.cli."""

from pipeline.cli import main

if __name__ == "__main__":
    main()
