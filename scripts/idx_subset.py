#!/usr/bin/env python3
"""Writes the first images and labels of an IDX data set (Fashion-MNIST's
four files, gzip-compressed or not) as a smaller one, gzip-compressed, for
the GPU check's bundle.

usage: idx_subset.py SRC_DIR DST_DIR TRAIN TEST

TRAIN and TEST are the number of training and test images kept (at most
what the set has). Exit status 0, 1 when a file is missing or not IDX.
"""
import gzip
import os
import struct
import sys

SPLITS = (("train", "train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
          ("test", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"))


def read_idx(directory, name):
    for path, opener in ((os.path.join(directory, name + ".gz"), gzip.open),
                         (os.path.join(directory, name), open)):
        if os.path.exists(path):
            with opener(path, "rb") as f:
                return path, f.read()
    raise OSError(f"{os.path.join(directory, name)}[.gz]: no such file")


def subset(path, data, count):
    """The IDX file `data` cut to its first `count` items."""
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 8:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes")
    ndims = data[3]
    dims = list(struct.unpack(f">{ndims}I", data[4:4 + 4 * ndims]))
    item = 1
    for d in dims[1:]:
        item *= d
    count = min(count, dims[0])
    header_end = 4 + 4 * ndims
    dims[0] = count
    return (data[:4] + struct.pack(f">{ndims}I", *dims) +
            data[header_end:header_end + count * item])


def main(argv):
    if len(argv) != 5:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    src, dst = argv[1], argv[2]
    counts = {"train": int(argv[3]), "test": int(argv[4])}
    os.makedirs(dst, exist_ok=True)
    try:
        for split, images, labels in SPLITS:
            for name in (images, labels):
                path, data = read_idx(src, name)
                out = subset(path, data, counts[split])
                with gzip.open(os.path.join(dst, name + ".gz"), "wb",
                               compresslevel=9) as f:
                    f.write(out)
    except (OSError, ValueError) as e:
        print(f"idx_subset: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
