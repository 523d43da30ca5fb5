const arrays = [];
for (;;) arrays.push(new Float64Array(1e6));
