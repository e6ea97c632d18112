"""`python -m gradtape aot ...` and `python -m gradtape inspect ...` (see gradtape/cli)."""
from .cli import main

raise SystemExit(main())
