return [].concat(new Array(1e9)).length;
