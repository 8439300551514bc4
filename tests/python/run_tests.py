"""ctest's entry for the Python module (test_python): run pytest on this folder.

Exits 77, which ctest reports as "Not Run", only when numpy or pytest cannot be imported;
`make test` installs both (python3-numpy, python3-pytest), so there they always run.
Extra arguments go to pytest (e.g. -k incremental).
"""
import sys
from pathlib import Path

try:
    import numpy  # noqa: F401
    import pytest
except ImportError as e:
    print(f"test_python skipped: {e} (apt-get install python3-numpy python3-pytest)")
    sys.exit(77)

here = Path(__file__).resolve().parent
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-o", "console_output_style=classic",
                      str(here), *sys.argv[1:]]))
