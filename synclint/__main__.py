from synclint.frontends.cli import main

main()
