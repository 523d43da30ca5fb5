tools.echo = () => "fake";
try { globalThis.tools = { echo: () => "fake" }; } catch {}
return await tools.echo({ a: 1 });
