#!/usr/bin/env python3
"""Draws a terminal screen captured as text (`tmux capture-pane -p`) as a
PNG, one cell per character, for docs/live-view.png: block elements and
box lines drawn as the terminal draws them, the rest in DejaVu Sans Mono.
Needs Pillow (`pip install pillow`).

Usage: scripts/screen-to-png.py SCREEN.txt OUT.png
"""
import sys
from PIL import Image, ImageDraw, ImageFont
text = open(sys.argv[1], encoding="utf-8").read().rstrip("\n").split("\n")
font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf", 14)
bold = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSansMono-Bold.ttf", 14)
cw = round(font.getlength("M")); ch = 17; pad = 12
cols = max(len(l) for l in text)
img = Image.new("RGB", (cols * cw + 2 * pad, len(text) * ch + 2 * pad), (28, 28, 28))
d = ImageDraw.Draw(img)
for y, line in enumerate(text):
    for x, c in enumerate(line):
        if c == " ":
            continue
        px, py = pad + x * cw, pad + y * ch
        if c in "▁▂▃▄▅▆▇█":
            # Block elements fill their cell from the bottom, as a terminal draws them.
            h = round(ch * ("▁▂▃▄▅▆▇█".index(c) + 1) / 8)
            d.rectangle([px, py + ch - h, px + cw - 1, py + ch - 1], fill=(120, 200, 120))
            continue
        if c in "─│┌┐└┘":
            mx, my = px + cw // 2, py + ch // 2
            col = (130, 130, 130)
            if c in "─┌└": d.line([mx, my, px + cw, my], fill=col)
            if c in "─┐┘": d.line([px, my, mx, my], fill=col)
            if c in "│┌┐": d.line([mx, my, mx, py + ch], fill=col)
            if c in "│└┘": d.line([mx, py, mx, my], fill=col)
            continue
        f = bold if y == 0 else font
        d.text((px, py), c, font=f, fill=(220, 220, 220))
img.save(sys.argv[2], optimize=True)
