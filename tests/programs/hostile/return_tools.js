return tools;
