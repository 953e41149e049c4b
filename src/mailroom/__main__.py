from mailroom.cli import main

main()
