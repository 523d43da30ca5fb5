const args = { list: [1] };
const pending = tools.echo(args);
args.list.push(2);
args.extra = true;
return await pending;
