from pipeline.frontends.cli import main

raise SystemExit(main())
