"""``python -m pearl_py.cli``: the ``pearl`` command."""
import sys

from pearl_py.cli.main import main

sys.exit(main())
