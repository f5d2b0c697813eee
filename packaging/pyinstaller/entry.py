"""The frozen app's entry point: the workbench's own child processes first, then `workbench`.

In a frozen build the app is also the interpreter for the hardened posture's exec wrapper and the
QuickJS worker (see `workbench.platform.interpreter`): those arrive as `INTERNAL_FLAG MODULE ...`
and never reach the command line parser. The bootloader's own variables are taken out of the
environment first, so no child process inherits them.
"""

import os
import sys

from workbench.platform.interpreter import clean_frozen_environment, run_internal

if __name__ == "__main__":
    clean_frozen_environment(os.environ)
    run_internal(sys.argv)
    from workbench.cli import main  # after the dispatch: a child needs none of the CLI

    sys.exit(main())
