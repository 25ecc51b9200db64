from rl_advisor.cli import main

raise SystemExit(main())
