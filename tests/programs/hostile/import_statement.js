import fs from "fs";
return 1;
