Array.prototype.map = null;
Object.prototype.toJSON = () => "hijacked";
Array.prototype.toJSON = () => "hijacked";
Object.defineProperty(Object.prototype, "a", { set() { throw new Error("setter ran") }, configurable: true });
const r = await tools.echo({ a: 1, list: [1, 2] });
return r;
