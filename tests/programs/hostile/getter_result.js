return { get a() { throw new Error("result getter") } };
