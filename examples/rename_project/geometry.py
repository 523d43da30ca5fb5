"""Shapes' areas."""

import math


def circle_area(radius):
    return math.pi * radius * radius


def square_area(side):
    return side * side
