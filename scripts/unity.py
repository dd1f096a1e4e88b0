#!/usr/bin/env python3
"""Writes one CUDA translation unit that includes every given .cu file."""
import os
import sys

out, sources = sys.argv[1], sys.argv[2:]
with open(out, "w") as f:
    for src in sources:
        f.write('#include "%s"\n' % os.path.abspath(src))
