#!/usr/bin/env python3
"""Embeds a binary file as a C array: embed.py INPUT OUTPUT.c SYMBOL."""
import sys

src, out, name = sys.argv[1:4]
data = open(src, "rb").read()
with open(out, "w") as f:
    f.write("/* Generated from %s by scripts/embed.py. */\n" % src.split("/")[-1])
    f.write("#include <stddef.h>\n\n")
    # 16-byte alignment: cuModuleLoadData reads the image in place.
    f.write("__attribute__((aligned(16))) const unsigned char %s[] = {\n" % name)
    for i in range(0, len(data), 16):
        f.write("    " + ", ".join("0x%02x" % b for b in data[i:i + 16]) + ",\n")
    f.write("};\n")
    f.write("const size_t %s_size = %d;\n" % (name, len(data)))
