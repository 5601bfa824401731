"""The ``nholo`` command installed with the Python package: runs the nholo
binary that pip built into the package (nholo/bin/nholo), which finds the
headers for model-file plugins next to it (nholo/include/nholo)."""
from __future__ import annotations

import os
import sys
from pathlib import Path


def main() -> None:
    exe = Path(__file__).resolve().parent / "bin" / "nholo"
    if not exe.is_file():
        sys.exit(f"nholo: the command is not in this installation ({exe} is missing); "
                 "reinstall the package with pip install .")
    os.execv(str(exe), [str(exe), *sys.argv[1:]])


if __name__ == "__main__":
    main()
