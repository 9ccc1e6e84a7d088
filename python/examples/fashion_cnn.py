"""The seeds' FashionCNN, written in Python, trained by gradsync and
measured in PyTorch with the pulled weights.

    GRADSYNC_COORDINATOR=127.0.0.1:50051 python fashion_cnn.py [DATA] [EPOCHS]

DATA: an image folder with train/ and test/ (default data/fashion-mnist,
`gradsync data fetch fashion-mnist data/fashion-mnist`); a coordinator and
two workers must be running (README "Your first job"). The same steps as a
notebook: fashion_cnn.ipynb.
"""
import sys

import torch
from torch import nn
from torchvision import datasets, transforms

import gradsync


class FashionCNN(nn.Module):
    """The seeds' Fashion-MNIST model (28x28 grayscale, 10 classes)."""

    def __init__(self):
        super().__init__()
        self.layer1 = nn.Sequential(
            nn.Conv2d(1, 32, kernel_size=3, padding=1), nn.BatchNorm2d(32),
            nn.ReLU(), nn.MaxPool2d(kernel_size=2, stride=2))
        self.layer2 = nn.Sequential(
            nn.Conv2d(32, 64, kernel_size=3), nn.BatchNorm2d(64), nn.ReLU(),
            nn.MaxPool2d(2))
        self.fc1 = nn.Linear(64 * 6 * 6, 600)
        self.drop = nn.Dropout(0.25)
        self.fc2 = nn.Linear(600, 120)
        self.fc3 = nn.Linear(120, 10)

    def forward(self, x):
        out = self.layer2(self.layer1(x)).flatten(1)
        return self.fc3(self.fc2(self.drop(self.fc1(out))))


def test_accuracy(net, data):
    """Top-1 accuracy (percent) of `net` on data/test, in PyTorch."""
    test = datasets.ImageFolder(f"{data}/test", transforms.Compose(
        [transforms.Grayscale(), transforms.ToTensor()]))
    net.eval()
    correct = 0
    with torch.no_grad():
        for x, y in torch.utils.data.DataLoader(test, batch_size=500):
            correct += (net(x).argmax(1) == y).sum().item()
    return 100 * correct / len(test)


def main(data="data/fashion-mnist", epochs=1):
    client = gradsync.connect()
    job = client.submit(model=FashionCNN(), dataset=data, eval_split="test",
                        epochs=int(epochs), batch_size=100, workers=2,
                        name="fashion-cnn-from-python")
    print(f"submitted {job.id}")
    final = job.wait()
    reported = 100 * final["metrics"]["eval"][-1]["accuracy"]
    net = FashionCNN()
    net.load_state_dict(job.state_dict())
    measured = test_accuracy(net, data)
    print(f"{job.id}: gradsync reported {reported:.2f}%, PyTorch measures "
          f"{measured:.2f}% with the pulled weights")
    return reported, measured


if __name__ == "__main__":
    main(*sys.argv[1:])
