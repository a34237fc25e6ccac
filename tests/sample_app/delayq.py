# A file of the application named like delayq itself: it must shadow nothing.
raise ImportError("the application's delayq.py was imported instead of the installed delayq")
