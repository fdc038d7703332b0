import sys
def main():
    sys.exit("fatal: something went wrong")
main()
