const value = await new Promise(() => {});
return value;
