from switchboard.cli import main

main()
