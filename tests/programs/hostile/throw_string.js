throw "x"
