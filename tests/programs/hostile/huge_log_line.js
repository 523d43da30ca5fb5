console.log("y".repeat(5e6));
return "logged";
