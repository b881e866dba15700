"""The lesson pages' charts and helpers; the maths they draw lives in attention_lab.lessons."""
