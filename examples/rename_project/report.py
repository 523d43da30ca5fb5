"""A report that uses the geometry module."""

from geometry import circle_area, square_area


def total_area(circles, squares):
    return sum(circle_area(r) for r in circles) + sum(square_area(s) for s in squares)
