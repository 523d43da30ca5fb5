return "a\uD800b";
