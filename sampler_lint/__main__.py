from sampler_lint.console import main

if __name__ == "__main__":
    main()
