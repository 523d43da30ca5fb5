const o = { toJSON() { while (true) {} } };
return o;
