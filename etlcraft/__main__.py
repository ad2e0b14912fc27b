from etlcraft.cli import main

main()
