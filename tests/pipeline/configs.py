"""Composing the pipeline's config as the CLI does, for the config tests (test_config.py,
test_settings_schemas.py, test_reliability.py), and the check they share: a bad value is a
ConfigError whose message starts by naming it."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir

from pipeline.cli import CONFIG_DIR
from pipeline.config import ConfigError, register, validate


def compose_config(overrides, hydra=False):
    """The composed config for ``overrides`` (with Hydra's own settings when ``hydra``); the
    schemas are registered first (register() is idempotent), as the CLI does."""
    register()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        return compose(config_name="config", overrides=overrides, return_hydra_config=hydra)


def assert_config_error(overrides, message):
    """Validating the config of ``overrides`` raises a ConfigError whose message starts with
    ``message``."""
    with pytest.raises(ConfigError) as err:
        validate(compose_config(overrides))
    assert str(err.value).startswith(message)
