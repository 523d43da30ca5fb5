return /(a+)+$/.test("a".repeat(40) + "b");
