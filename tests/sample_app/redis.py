# A file of the application that happens to be named like a package delayq uses: it must shadow nothing.
raise ImportError("the application's redis.py was imported instead of redis-py")
