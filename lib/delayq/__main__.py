"""`python -m delayq ...`: the same as the `delayq` command."""

import os
import sys

# -m puts the working directory first on the path; the application's modules belong after the
# installed packages (DELAYQ_APP_PATH), so a file named redis.py there shadows nothing.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.getcwd():
    del sys.path[0]

from delayq.commands import main  # noqa: E402

sys.exit(main())
