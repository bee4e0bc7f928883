import sys

from p4handoff.cli.main import main

sys.exit(main())
