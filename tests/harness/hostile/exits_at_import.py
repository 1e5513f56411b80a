"""Ends its process with exit code 0 while it is imported."""

import os

os._exit(0)
