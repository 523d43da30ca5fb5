delete globalThis.console;
delete globalThis.tools;
return [typeof console, typeof tools];
