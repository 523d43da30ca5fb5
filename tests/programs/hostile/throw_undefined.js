throw undefined
