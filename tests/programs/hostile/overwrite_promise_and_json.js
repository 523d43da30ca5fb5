globalThis.Promise = function () { throw new Error("hijacked") };
JSON.stringify = () => "hijacked";
JSON.parse = () => "hijacked";
return await tools.echo({ a: 1, b: [true] });
