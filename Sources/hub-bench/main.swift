print("hub-bench: not yet")
