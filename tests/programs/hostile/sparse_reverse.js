new Array(2 ** 31).reverse();
return "reversed";
