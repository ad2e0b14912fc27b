"""Task handlers: what an attempt does in the warehouse or with a script. Each takes a TaskContext and returns a
HandlerResult; the task process records it with finish_attempt."""
