def main():
    print("main ran")
if __name__ == "__main__":
    main()
else:
    print("not main:", __name__)
