from synclint.cli import main

main()
