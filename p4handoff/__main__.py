import sys

from p4handoff.cli import main

sys.exit(main())
