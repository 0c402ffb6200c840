from sampler_lint.console import script

if __name__ == "__main__":
    script()
