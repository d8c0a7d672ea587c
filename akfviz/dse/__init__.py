"""Design-space exploration: sweeps over selector and hardware parameters (local or Dask)."""
from .sweep import (BASELINE_COLUMNS, COLUMN_HELP, SWEEP_PARAMETERS, check_sweep, expand_grid, load_sweep,
                    parse_grid, run_sweep, save_sweep)

__all__ = ["SWEEP_PARAMETERS", "BASELINE_COLUMNS", "COLUMN_HELP", "check_sweep", "expand_grid", "parse_grid",
           "run_sweep", "save_sweep", "load_sweep"]
