# expect: ok
MORSE = {"A": ".-", "B": "-...", "C": "-.-.", "D": "-..", "E": ".", "F": "..-.", "G": "--.",
         "H": "....", "I": "..", "J": ".---", "K": "-.-", "L": ".-..", "M": "--", "N": "-.",
         "O": "---", "P": ".--.", "Q": "--.-", "R": ".-.", "S": "...", "T": "-", "U": "..-",
         "V": "...-", "W": ".--", "X": "-..-", "Y": "-.--", "Z": "--.."}
BACK = {v: k for k, v in MORSE.items()}

def encode(text):
    return " / ".join(" ".join(MORSE[c] for c in word) for word in text.upper().split())

def decode(code):
    return " ".join("".join(BACK[s] for s in word.split()) for word in code.split(" / "))

assert encode("sos") == "... --- ..."
assert decode(encode("hello world")) == "HELLO WORLD"
