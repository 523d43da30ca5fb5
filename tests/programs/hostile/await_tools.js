const t = await tools;
return Object.keys(t);
