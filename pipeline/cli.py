"""The Hydra entry point: a thin shell that validates the config and hands it to pipeline.run."""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pipeline.config import ConfigError, register, validate

register()

#: conf/ beside the packages (absolute: Hydra resolves a relative path as a Python module when the
#: entry point runs with -m).
CONFIG_DIR = str(Path(__file__).resolve().parent.parent / "conf")


@hydra.main(version_base=None, config_path=CONFIG_DIR, config_name="config")
def main(cfg: DictConfig) -> None:
    from pipeline.data import DataError
    from pipeline.run import run

    try:
        config = validate(cfg)
        if config.output_dir is None:
            config.output_dir = HydraConfig.get().runtime.output_dir
        run(config)
    except (ConfigError, DataError) as e:  # a user's mistake: say what and how to fix it
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
