#!/usr/bin/env python3
"""Counts the pixels of given colours in a PNG (8-bit RGB or RGBA, not
interlaced), with the standard library only.

    png_colors.py FILE RRGGBB [RRGGBB ...]

Prints "RRGGBB COUNT" per colour (within 8 per channel) and the image size.
"""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and color in (2, 6) and interlace == 0, "unsupported PNG"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def main():
    width, height, bpp, rows = decode(sys.argv[1])
    wanted = [(h, tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))) for h in sys.argv[2:]]
    counts = {h: 0 for h, _ in wanted}
    for line in rows:
        for x in range(0, len(line), bpp):
            r, g, b = line[x], line[x + 1], line[x + 2]
            for h, (wr, wg, wb) in wanted:
                if abs(r - wr) <= 8 and abs(g - wg) <= 8 and abs(b - wb) <= 8:
                    counts[h] += 1
    print(f"size {width} {height}")
    for h, _ in wanted:
        print(h, counts[h])


if __name__ == "__main__":
    main()
